import {defineConfig} from 'vitest/config'

// Two projects. "offline" needs no cluster (unit, CLI, the in-repo server's and the fake control
// plane's own tests) and runs files in parallel. "cluster" (test/cluster, test/e2e) runs against one
// real kube-apiserver per run when KUBEBUILDER_ASSETS is set or ../shared/tools/envtest exists
// (test/support/envtest-global-setup.ts), one file at a time: each file's fake control plane acts
// cluster-wide, so files sharing the server must not overlap (see that file for the measurements).
const shared = {
  // oclif writes through process.stdout; without this vitest swallows it (oclif/test#655).
  disableConsoleIntercept: true,
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: 'forks',
} as const

export default defineConfig({
  test: {
    projects: [
      {test: {...shared, name: 'offline', include: ['test/**/*.test.ts'], exclude: ['test/cluster/**', 'test/e2e/**']}},
      {
        test: {
          ...shared,
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/envtest-global-setup.ts'],
          fileParallelism: false,
          // Tearing a cluster down on a real server waits for the fake control plane to empty and
          // finalize namespaces (up to 60 s of its own) after uninstalling; beforeAll hooks start servers.
          hookTimeout: 180_000,
        },
      },
    ],
  },
})
