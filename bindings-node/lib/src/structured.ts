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
  type: 'json_schema';
  schema: S;
  name?: string;
}

/** A JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

type Simplify<T> = { [K in keyof T]: T[K] } & {};

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

type ObjectOf<S> = S extends { readonly properties: infer P }
  ? Simplify<
      {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K]>;
      } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K]>;
      }
    >
  : Record<string, unknown>;

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

type ArrayOf<S> = S extends { readonly items: infer I } ? FromSchema<I>[] : unknown[];

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
    : S extends { readonly const: infer C }
      ? C
      : S extends { readonly enum: readonly (infer E)[] }
        ? E
        : S extends { readonly anyOf: readonly (infer A)[] }
          ? FromSchema<A>
          : S extends { readonly oneOf: readonly (infer A)[] }
            ? FromSchema<A>
            : S extends { readonly type: readonly (infer T)[] }
              ? TypeOf<S, T>
              : S extends { readonly type: infer T }
                ? TypeOf<S, T>
                : S extends { readonly properties: unknown }
                  ? ObjectOf<S>
                  : unknown;

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
