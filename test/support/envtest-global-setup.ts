// vitest globalSetup of the cluster project (test/e2e, test/cluster): one real kube-apiserver for
// the whole run, handed to the test workers with provide/inject (runEnvtest() in envtest.ts), its
// version printed once. Without a binary the tiers run on the in-repo test API server, and say so.
//
// Why one server with the cluster project's files run one after another (fileParallelism: false)
// rather than one server per worker: the fake control plane acts cluster-wide (scheduling, garbage
// collection, namespace finalization, injection), as kube-controller-manager does, so two test files
// each with their own control plane on one server would fight over the same objects; and the
// cluster-tier tests list cluster-wide (census, preflight). Each file therefore has the server to
// itself (its namespaces, its control plane), and startTestCluster's Lease still guards against
// another run sharing the server. Measured on 2 cores (numbers in test/support/apiserver/README.md):
// the server starts in 4.4 s idle (up to 11 s under load), once; a server per file would cost that
// per file and the memory of several servers, for parallelism the 2 cores do not have (the CLI
// processes, the control plane and the server already keep both busy).
import type {TestProject} from 'vitest/node'

import {ASSETS_ENV, ENVTEST_DIR, type Envtest, envtestAssets, startEnvtest} from './envtest.js'

// The cluster and e2e projects both name this setup, and vitest loads it once per project: the server is kept
// on globalThis (one main process) so both share it (one start, one version line); the last teardown stops it.
interface Shared {
  env?: Promise<Envtest>
  users: number
}
const SHARED = Symbol.for('mesh-migrate.envtest-global-setup')
const shared = ((globalThis as Record<symbol, Shared | undefined>)[SHARED] ??= {users: 0})

export async function setup(project: TestProject): Promise<void> {
  let assets: string | undefined
  let why = `${ASSETS_ENV} is not set and ${ENVTEST_DIR} is absent`
  try {
    assets = await envtestAssets()
  } catch (error) {
    why = `${ENVTEST_DIR}/setup.sh failed: ${(error as Error).message.trim()}`
  }
  if (!assets) {
    process.stderr.write(
      `\n[mesh-migrate tests] no kube-apiserver (${why}): the cluster and end-to-end tiers run against the in-repo test API server instead of a real one.\n`,
    )
    return
  }
  // The workers (and the CLI processes they start) see the folder too: per-file servers
  // (test/cluster/server.ts) and second servers then skip setup.sh.
  process.env[ASSETS_ENV] = assets
  const started = Date.now()
  if (!shared.env) {
    shared.env = startEnvtest({assets})
    const server = await shared.env
    process.stderr.write(
      `\n[mesh-migrate tests] real kube-apiserver ${server.version} at ${server.url} (${ASSETS_ENV}=${assets}), ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    )
  }
  const server = await shared.env
  shared.users++
  project.provide('envtest', {url: server.url, version: server.version, caPem: server.caPem, tokens: server.tokens})
}

export async function teardown(): Promise<void> {
  if (!shared.env || --shared.users > 0) return
  const server = shared.env
  shared.env = undefined
  await (await server).stop()
}
