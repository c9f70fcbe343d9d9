import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const TOP_LEVEL_FILE = '[a-z_]+\\.js$';

/** Folders of src/kubelet that hold pure decisions only: no file system, network, timers or API client. */
export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  // Layering between the folders of src/ (bottom first): util; api, kube, runtime; node; kubelet; server,
  // operator; app (one node's assembly, the kubelet's NewMainKubelet); the process's own files (main.ts,
  // config.ts, metrics.ts). A folder imports values only from the
  // layers below it; type-only imports may go anywhere (they vanish at run time). Cycles between files are
  // refused by `npm run lint:cycles`.
  ...layer('util', ['api', 'kube', 'runtime', 'node', 'kubelet', 'server', 'operator', 'app'], true),
  ...layer('api', ['kube', 'runtime', 'node', 'kubelet', 'server', 'operator', 'app'], true),
  ...layer('kube', ['runtime', 'node', 'kubelet', 'server', 'operator', 'app'], true),
  // The runtime layer knows sandboxes and containers, never pods, the kubelet or the API (the kubelet builds
  // the configs it runs).
  ...layer('runtime', ['kube', 'node', 'kubelet', 'server', 'operator', 'app'], true, false),
  ...layer('node', ['kubelet', 'server', 'operator', 'app'], true),
  ...layer('kubelet', ['server', 'operator', 'app'], true),
  // The kubelet is pure (decisions only, no I/O module) but for its `shell/` folders: the Kubelet's own
  // (src/kubelet/shell/) and each concept's (kuberuntime/shell/, eviction/shell/, ...). test/unit/purity.test.ts
  // also follows what the pure files import through the rest of src/.
  ...pure('kubelet', ['server', 'operator', 'app']),
  // The node API shows the process's flags on /configz (config.ts) and nothing else of the process's files.
  ...layer('server', ['operator', 'app'], 'config'),
  // The operator drives nodes through the ManagedNode seam; their assembly (src/app/) is handed to it by main.ts.
  ...layer('operator', ['app'], true),
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);

/**
 * `no-restricted-imports` for the files of src/<folder>: no value import from the `above` folders, nor from
 * src/'s own files (`topFiles`: true for none of them, a name for all but that one); `allowTypes: false`
 * refuses type-only imports too. One entry per depth, since an import names src/'s files by `../` count.
 */
function layer(folder, above, topFiles, allowTypes = true) {
  const entries = [];
  for (let depth = 1; depth <= 5; depth++) {
    const up = '(\\.\\./){' + depth + '}';
    const top =
      topFiles === true ? `^${up}${TOP_LEVEL_FILE}` : `^${up}(?!${topFiles}\\.js$)${TOP_LEVEL_FILE}`;
    entries.push({
      files: [`src/${folder}/${'*/'.repeat(depth - 1)}*.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                regex: `^${up}(${above.join('|')})/`,
                allowTypeImports: allowTypes,
                message: `src/${folder} must not import the layers above it (${above.join(', ')}).`,
              },
              {
                regex: top,
                allowTypeImports: allowTypes,
                message: `src/${folder} must not import the process's own files (src/*.ts).`,
              },
            ],
          },
        ],
      },
    });
  }
  return entries;
}

/**
 * `layer` for the files of src/<folder> outside its `shell/` folders, plus no value import of an I/O module: a
 * Node built-in, gRPC, the Kubernetes or HTTP clients, the API client's I/O (kube client, informer, events),
 * the runtimes' implementations, or a `shell/` module of the folder.
 */
function pure(folder, above) {
  const entries = [];
  for (let depth = 1; depth <= 5; depth++) {
    const up = '(\\.\\./){' + depth + '}';
    const [layerEntry] = layer(folder, above, true).slice(depth - 1, depth);
    const patterns = layerEntry.rules['no-restricted-imports'][1].patterns;
    entries.push({
      files: [`src/${folder}/${'*/'.repeat(depth - 1)}*.ts`],
      ignores: [`src/${folder}/**/shell/**`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              ...patterns,
              {
                regex: '^(node:|@grpc/|@kubernetes/|undici$|winston$|p-queue$)',
                allowTypeImports: true,
                message: `src/${folder} outside its shell/ folders does no I/O: no Node built-in, gRPC or HTTP client.`,
              },
              {
                regex: `^${up}(kube/(client|informer|events|transport|h2watches)\\.js$|runtime/(cri|sim)/)`,
                allowTypeImports: true,
                message: `src/${folder} outside its shell/ folders does no I/O: no API client or runtime implementation.`,
              },
              {
                regex: '^\\.\\.?/(.*/)?shell/',
                allowTypeImports: true,
                message: `src/${folder} outside its shell/ folders does no I/O: not a shell/ module.`,
              },
            ],
          },
        ],
      },
    });
  }
  return entries;
}
