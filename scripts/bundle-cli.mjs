/**
 * Bundles the built CLI (dist/src/cli/main.js and everything of loopx's own it imports) into
 * dist/cli/ with Rollup: one entry module plus chunks split along the dynamic imports, so a command
 * still loads only the chunks it uses (the command table, src/cli/main.ts). Rollup, not esbuild:
 * esbuild assigns whole files to chunks by the entry points that reach them, so each layer's
 * `index.ts` barrel put every file of its layer in the chunks of every command that imports any of
 * it; Rollup follows a re-export to the module that defines it, and loopx's own modules are marked
 * free of import side effects (src/ imports nothing for its side effects alone), so a chunk holds
 * the modules its entry's code reaches — `run show` loads a third of what it did. Node's ES module loader pays a fixed cost
 * per module; a command that loaded ~400 of loopx's modules loads a handful of chunks instead.
 * Packages stay external (Node resolves them from node_modules as before), except the plain
 * JavaScript ones of INLINED, the packages every command or every read of a root loads: Node's
 * loader pays per module (@bufbuild/protobuf alone is 66), and a CommonJS package also pays for the
 * loader's export detection. Inlined CommonJS code reaches Node's built-in modules through the
 * `require` the banner defines. Packages with native code or files of their own (better-sqlite3)
 * and those only a feature loads stay external.
 *
 * Every module keeps its own `import.meta.url`: a bundled module's references to it are rewritten
 * to the URL of the built file it came from (relative to the chunk, so the package stays
 * relocatable). Its workers, the `createRequire` of its packages, the version read from
 * package.json and each tool's source identity (the SHA-256 of its built module, which a run's
 * plan identity records) are therefore exactly those of the unbundled build in dist/src/.
 *
 * Run by `npm run build` after `tsc`; bin/loopx.js runs dist/cli/main.js.
 */
import { rollup } from 'rollup';
import commonjs from '@rollup/plugin-commonjs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import { readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

/** Pure JavaScript packages whose many small modules are inlined into the chunks that use them (see above). */
const INLINED = [
  '@bufbuild/protobuf',
  'commander',
  'canonicalize',
  'tar-stream',
  'streamx',
  'fast-fifo',
  'text-decoder',
  'b4a',
  'events-universal',
];

const repo = join(dirname(new URL(import.meta.url).pathname), '..');
const outdir = join(repo, 'dist', 'cli');
// Written beside it and swapped in whole: a CLI starting meanwhile finds the old bundle, or none
// (bin/loopx.js then runs the unbundled build), never half of one.
const staging = `${outdir}.${process.pid}`;
const own = `${sep}dist${sep}src${sep}`;

/** `import.meta.url` of the built module at `path`, as an expression valid in any chunk of `outdir` (a sibling of `staging`). */
const ownUrl = (path) =>
  `new URL(${JSON.stringify(relative(outdir, path).split(sep).join('/'))}, import.meta.url).href`;

const bundle = await rollup({
  input: { main: join(repo, 'dist', 'src', 'cli', 'main.js') },
  // Node's built-ins and every package but the inlined ones stay imports Node resolves.
  external: (id) => {
    if (id.startsWith('.') || id.startsWith('/') || id.startsWith('\0')) return false;
    return id.startsWith('node:') || !INLINED.some((p) => id === p || id.startsWith(`${p}/`));
  },
  treeshake: { moduleSideEffects: (id) => !id.includes(own) },
  onwarn: (warning, warn) => {
    // Cycles between loopx's modules are the source's (the lint allows them inside a folder); `this` at a package's top level is theirs.
    if (warning.code === 'CIRCULAR_DEPENDENCY' || warning.code === 'THIS_IS_UNDEFINED') return;
    if (warning.code === 'CYCLIC_CROSS_CHUNK_REEXPORT') return;
    warn(warning);
  },
  plugins: [
    {
      name: 'own-modules',
      async load(id) {
        if (!id.includes(own)) return null;
        const text = await readFile(id, 'utf8');
        // JSON data files (the drill's targets) as a default export, as Node's JSON modules give them.
        if (id.endsWith('.json')) return `export default ${text};`;
        if (!id.endsWith('.js')) return null;
        return text.includes('import.meta.url') ? text.replaceAll('import.meta.url', ownUrl(id)) : text;
      },
    },
    nodeResolve({ preferBuiltins: true }),
    commonjs(),
  ],
});
await bundle.write({
  dir: staging,
  format: 'es',
  entryFileNames: '[name].js',
  chunkFileNames: 'chunk-[hash].js',
  banner:
    "import { createRequire as __loopxCreateRequire } from 'node:module';\nconst require = __loopxCreateRequire(import.meta.url);",
});
await bundle.close();

const old = `${outdir}.old-${process.pid}`;
await rename(outdir, old).catch((e) => {
  if (e.code !== 'ENOENT') throw e;
});
await rename(staging, outdir);
await rm(old, { recursive: true, force: true });
