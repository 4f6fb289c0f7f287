/**
 * Bundles the built CLI (dist/src/cli/main.js and everything of loopx's own it imports) into
 * dist/cli/: one entry module plus one chunk per dynamic import, so a command still loads only the
 * chunks it uses (the command table, src/cli/main.ts). Node's ES module loader pays a fixed cost
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
import { build } from 'esbuild';
import { readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

/** Pure ES-module packages whose many small modules are inlined into the chunks that use them (see above). */
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

/** `import.meta.url` of the built module at `path`, as an expression valid in any chunk of `outdir` (a sibling of `staging`). */
const ownUrl = (path) =>
  `new URL(${JSON.stringify(relative(outdir, path).split(sep).join('/'))}, import.meta.url).href`;

await build({
  absWorkingDir: repo,
  entryPoints: { main: join(repo, 'dist', 'src', 'cli', 'main.js') },
  outdir: staging,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  banner: {
    js: "import { createRequire as __loopxCreateRequire } from 'node:module';\nconst require = __loopxCreateRequire(import.meta.url);",
  },
  plugins: [
    {
      name: 'packages-external-but-inlined',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) =>
          INLINED.some((p) => args.path === p || args.path.startsWith(`${p}/`))
            ? undefined
            : { path: args.path, external: true },
        );
      },
    },
    {
      name: 'own-import-meta-url',
      setup(b) {
        b.onLoad({ filter: /[\\/]dist[\\/]src[\\/].*\.js$/ }, async (args) => {
          const text = await readFile(args.path, 'utf8');
          return {
            contents: text.includes('import.meta.url') ? text.replaceAll('import.meta.url', ownUrl(args.path)) : text,
            loader: 'js',
          };
        });
      },
    },
  ],
});

const old = `${outdir}.old-${process.pid}`;
await rename(outdir, old).catch((e) => {
  if (e.code !== 'ENOENT') throw e;
});
await rename(staging, outdir);
await rm(old, { recursive: true, force: true });
