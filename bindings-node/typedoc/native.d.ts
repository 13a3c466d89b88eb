/**
 * `@robota/native/native`: the addon itself, as napi-rs generates it (the package's `index.js`
 * and `index.d.ts`). The `@robota/native` facade wraps these classes with typed options, events
 * and errors; import them directly only to build something the facade does not offer. Most
 * values cross this boundary as JSON strings, as each method says.
 *
 * @module @robota/native/native
 */
export * from '../index.js';
