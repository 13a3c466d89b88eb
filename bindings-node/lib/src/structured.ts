/**
 * Structured output: answers shaped by a JSON Schema (`outputFormat`), and the TypeScript type a
 * schema describes ({@link FromSchema}), so `await query.structured(prompt, schema)` is typed
 * from the schema itself.
 *
 * The engine validates every answer against the schema with a real JSON Schema validator and
 * asks the model to fix an answer that does not match (up to `maxStructuredOutputRetries`
 * times); an answer that never matches rejects with a `structured_output` `RobotaError`.
 */

/** A JSON Schema (draft 2020-12 unless its `$schema` names another). */
export type JsonSchema = boolean | { readonly [key: string]: unknown };

/** The `outputFormat` option: every answer must be one JSON value matching `schema`. `name` is
 * what the schema is sent as to providers with native structured output (letters, digits, `_`,
 * `-`; default `structured_output`). */
export interface OutputFormat<S extends JsonSchema = JsonSchema> {
  /** The only format there is: one JSON value matching `schema`. */
  type: 'json_schema';
  /** The schema every answer must match. */
  schema: S;
  /** The name the schema is sent under to providers with native structured output. */
  name?: string;
}

/** A JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** `T` with its intersections flattened into one object type (for readable hover types). */
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The type of a schema `type` name other than `object` and `array`'s contents. */
type PrimitiveOf<T> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? unknown[]
          : T extends 'object'
            ? Record<string, unknown>
            : unknown;

/** The object type an `object` schema describes: its `required` properties, then the optional rest. */
type ObjectOf<S> = S extends Readonly<Record<'properties', infer P>>
  ? Simplify<
      {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K]>;
      } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K]>;
      }
    >
  : Record<string, unknown>;

/** The names in an object schema's `required` list. */
type RequiredKeys<S> = S extends Readonly<Record<'required', readonly (infer R)[]>> ? R : never;

/** The array type an `array` schema describes (from its `items`). */
type ArrayOf<S> = S extends Readonly<Record<'items', infer I>> ? FromSchema<I>[] : unknown[];

/**
 * The TypeScript type of the values a JSON Schema accepts, for schemas written `as const` (or
 * passed straight to `query.structured`): `type` (one or a list), `properties` + `required`,
 * `items`, `enum`, `const`, `anyOf` / `oneOf`, and `nullable`-style `type: ['string', 'null']`.
 * Anything it does not understand is `unknown` (never wrong, only less precise); give the type
 * yourself then: `query.structured<MyType>(prompt, schema)`.
 */
export type FromSchema<S> = S extends true
  ? unknown
  : S extends false
    ? never
    : S extends Readonly<Record<'const', infer C>>
      ? C
      : S extends Readonly<Record<'enum', readonly (infer E)[]>>
        ? E
        : S extends Readonly<Record<'anyOf', readonly (infer A)[]>>
          ? FromSchema<A>
          : S extends Readonly<Record<'oneOf', readonly (infer A)[]>>
            ? FromSchema<A>
            : S extends Readonly<Record<'type', readonly (infer T)[]>>
              ? TypeOf<S, T>
              : S extends Readonly<Record<'type', infer T>>
                ? TypeOf<S, T>
                : S extends Readonly<Record<'properties', unknown>>
                  ? ObjectOf<S>
                  : unknown;

/** The type schema `S` describes when its `type` is `T`. */
type TypeOf<S, T> = T extends 'object' ? ObjectOf<S> : T extends 'array' ? ArrayOf<S> : PrimitiveOf<T>;

/** The engine's `output_format` for `format`: a whole {@link OutputFormat}, or just a schema. */
export function toOutputFormat(format: OutputFormat | JsonSchema): OutputFormat {
  if (
    typeof format === 'object' &&
    format !== null &&
    (format as { type?: unknown }).type === 'json_schema' &&
    'schema' in format
  ) {
    return format as OutputFormat;
  }
  return { type: 'json_schema', schema: format as JsonSchema };
}
