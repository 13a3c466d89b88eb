/**
 * The native addon (generated `index.js` / `index.d.ts` at the package root). Loaded as a
 * CommonJS module from both the ESM and the CommonJS build of the facade.
 */
import addon from '../../index.js';

/** The addon's exports. */
export const nativeAddon: typeof addon = addon;
