import {defineConfig} from 'vitest/config'

// Test tiers (vitest projects), fastest first; `npm test` runs them all, `npm run test:<tier>` one of them.
//   unit     pure functions and the executor over the in-memory KubeClient (test/support/memory-kube.ts):
//            no build, no child process, no server; the whole tier runs in seconds.
//   cli      the built bin/run.js as a child process (needs `npm run build`).
//   cluster  against an API server: cluster source, preflight, census (test/cluster).
//   model    the in-repo test API server's and the fake control plane's own tests (test/apiserver,
//            test/control-plane): they need that server's internals (request log, seeding), never the real one.
//   e2e      whole migrations, rollbacks, crashes and faults against an API server + fake control plane.
// A test that spawns the CLI belongs in cli (or cluster/e2e), never in unit.
//
// cluster and e2e run against one real kube-apiserver per project when KUBEBUILDER_ASSETS is set or
// ../shared/tools/envtest exists (test/support/envtest-global-setup.ts; the in-repo server otherwise), one
// file at a time: each file's fake control plane acts cluster-wide, so files sharing a server must not
// overlap. groupOrder runs the tiers one after another for the same reason (unit and cli share group 0).
const apiServerSetup = ['test/support/envtest-global-setup.ts']

const onServer = {
  globalSetup: apiServerSetup,
  fileParallelism: false,
  // Tearing a cluster down on a real server waits for the fake control plane to empty and finalize
  // namespaces (up to 60 s of its own) after uninstalling; beforeAll hooks start servers.
  hookTimeout: 180_000,
}

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
      {
        extends: true,
        test: {name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false, sequence: {groupOrder: 0}},
      },
      {extends: true, test: {name: 'cli', include: ['test/cli/**/*.test.ts'], sequence: {groupOrder: 0}}},
      {
        extends: true,
        test: {
          name: 'model',
          include: ['test/apiserver/**/*.test.ts', 'test/control-plane/**/*.test.ts'],
          sequence: {groupOrder: 0},
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          ...onServer,
          // Tests marked concurrent (preflight.test.ts: each starts servers of its own) run two at a time.
          maxConcurrency: 2,
          sequence: {groupOrder: 1},
        },
      },
      {extends: true, test: {name: 'e2e', include: ['test/e2e/**/*.test.ts'], ...onServer, sequence: {groupOrder: 2}}},
    ],
  },
})
