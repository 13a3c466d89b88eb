// Marks the two facade builds for Node's module loader: dist/esm is ESM, dist/cjs is CommonJS.
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..', 'dist');
fs.writeFileSync(path.join(root, 'esm', 'package.json'), '{ "type": "module" }\n');
fs.writeFileSync(path.join(root, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
