import {defineConfig} from 'vitest/config'

// Test tiers (vitest projects), fastest first; `npm test` runs them all, `npm run test:<tier>` one of them.
//   unit     pure functions and the executor over the in-memory KubeClient (test/support/memory-kube.ts):
//            no build, no child process, no server; the whole tier runs in seconds.
//   cli      the built bin/run.js as a child process (needs `npm run build`).
//   cluster  against an API server: cluster source, preflight, census, the test API server's and the fake
//            control plane's own tests (test/apiserver, test/control-plane).
//   e2e      whole migrations, rollbacks, crashes and faults against an API server + fake control plane.
// A test that spawns the CLI belongs in cli (or cluster/e2e), never in unit.

/**
 * Global setup of the tiers that talk to an API server (cluster, e2e): e.g. a module that starts one real
 * kube-apiserver for the run (envtest, KUBEBUILDER_ASSETS) and provides its address to the tests.
 * Attach it here, and only here: unit and cli must not pay for it.
 */
const apiServerSetup: string[] = []

export default defineConfig({
  test: {
    // oclif writes through process.stdout; without this vitest swallows it (oclif/test#655).
    disableConsoleIntercept: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      // Pure tests: files share a worker's module cache (isolate: false), which halves the tier's CPU time. A unit test
      // must therefore leave no global state behind (restore timers, cwd, env).
      {extends: true, test: {name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false}},
      {extends: true, test: {name: 'cli', include: ['test/cli/**/*.test.ts']}},
      {
        extends: true,
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts', 'test/apiserver/**/*.test.ts', 'test/control-plane/**/*.test.ts'],
          globalSetup: apiServerSetup,
        },
      },
      {extends: true, test: {name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: apiServerSetup}},
    ],
  },
})
