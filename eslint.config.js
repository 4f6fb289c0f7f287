import tseslint from 'typescript-eslint';
import boundaries from 'eslint-plugin-boundaries';
import reactHooks from 'eslint-plugin-react-hooks';

/**
 * The map (docs/architecture.md): each folder of src/ and the folders it may import, downward
 * only, and each of them only through its index.ts. The sub-folders of owners/ are owners of their
 * own: other folders reach them through owners/index.ts, and inside owners/ an owner reaches
 * another only through that owner's index.ts.
 */
const LAYERS = {
  cli: ['daemon', 'runtime', 'core'],
  daemon: ['runtime', 'core'],
  runtime: [
    'engine',
    'backup',
    'recovery',
    'repository',
    'snapshot',
    'run-authority',
    'owners',
    'store',
    'core',
    'dev',
  ],
  engine: ['snapshot', 'owners', 'run-authority', 'store', 'core'],
  backup: ['owners', 'store', 'core'],
  recovery: ['backup', 'owners', 'store', 'core'],
  owners: ['store', 'core'],
  store: ['core'],
  repository: ['core'],
  snapshot: ['core'],
  'run-authority': ['store', 'core'],
  dev: ['core'],
  core: [],
};

const folder = (names) => ({
  type: 'folder',
  captured: { folder: names.length === 1 ? names[0] : `{${names.join(',')}}` },
});
const index = (element) => ({ element: { ...element, fileInternalPath: 'index.ts' } });

/** The `boundaries/dependencies` policies of the map; test/lint/boundaries.test.ts shows them at work. */
const MAP_POLICIES = [
  // Packages and Node built-ins are not folders of the map (drivers have their own rule below).
  { allow: { to: { module: { origin: ['external', 'core'] } } } },
  // Inside one folder (or one owner), files import each other freely.
  { allow: { dependency: { relationship: { to: 'internal' } } } },
  ...Object.entries(LAYERS)
    .filter(([, to]) => to.length > 0)
    .map(([from, to]) => ({ from: { element: folder([from]) }, allow: { to: index(folder(to)) } })),
  // An owner: what owners/ may import, the shared files of owners/ (layout.ts, refusals.ts; never
  // owners/index.ts, which imports every owner), and another owner through its index.ts.
  { from: { element: { type: 'owner' } }, allow: { to: index(folder(LAYERS.owners)) } },
  {
    from: { element: { type: 'owner' } },
    allow: { to: { element: { ...folder(['owners']), fileInternalPath: '!index.ts' } } },
  },
  { from: { element: { type: 'owner' } }, allow: { to: index({ type: 'owner' }) } },
  { from: { element: folder(['owners']) }, allow: { to: index({ type: 'owner' }) } },
  // The runtime's read entry beside its index: a command that only reads a run loads no more (runtime/read.ts).
  {
    from: { element: folder(['cli']) },
    allow: { to: { element: { ...folder(['runtime']), fileInternalPath: 'read.ts' } } },
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/snapshot/gen/**', 'src/recovery/gen/**', 'coverage/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['better-sqlite3', 'pg'], message: 'Drivers are imported only inside src/store providers.' },
            {
              group: ['@aws-sdk/*'],
              message: 'The S3 SDK is imported only by the S3 repository provider (src/repository/s3.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/store/**', 'src/repository/s3.ts', 'test/**', 'bench/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
  // Size: no file over 600 lines, no function over 80 (blank lines and comments not counted).
  // A longer function states why in its header comment, ending with
  // `// eslint-disable-next-line max-lines-per-function -- <reason>` directly above it.
  {
    files: ['src/**/*.ts', 'ui/src/**/*.{ts,tsx}'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
      'max-lines': ['error', { max: 600 }],
    },
  },
  // The Settings ▸ Capability Center app: the same TypeScript rules, and the rules of hooks.
  { files: ['ui/**/*.{ts,tsx}'], ...reactHooks.configs.flat.recommended },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/snapshot/gen/**', 'src/recovery/gen/**'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { typescript: { project: 'tsconfig.json' } },
      // Most specific first: a file under src/owners/<owner>/ belongs to that owner.
      'boundaries/elements': [
        { type: 'owner', pattern: 'src/owners/*', capture: ['owner'] },
        { type: 'folder', pattern: 'src/*', capture: ['folder'] },
      ],
    },
    rules: {
      'boundaries/dependencies': ['error', { default: 'disallow', policies: MAP_POLICIES }],
    },
  },
);
