/**
 * The native addon (generated `index.js` / `index.d.ts` at the package root). Loaded as a
 * CommonJS module from both the ESM and the CommonJS build of the facade.
 */
import addon from '../../index.js';

/** The addon's exports. */
export const nativeAddon: typeof addon = addon;

// Every process a session started (Bash calls, background tasks, hooks) ends with it. When the
// JavaScript environment ends normally the addon's cleanup hook stops them; `process.exit()` on
// the main thread skips cleanup hooks, so stop them from its `exit` event too. This listener
// does not keep Node alive and changes nothing about how the process exits.
process.on('exit', () => {
  addon.stopSessionProcesses();
});
