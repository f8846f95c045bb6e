// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). ztunnel-ready: the ztunnel DaemonSet is ready on every node.
import {type CheckContext, type Diag} from './context.js'
import {ZTUNNEL, daemonSetDiagnostics} from './daemonset-ready.js'

export async function checkZtunnelReady(ctx: CheckContext): Promise<Diag[]> {
  return (await daemonSetDiagnostics(ctx, ZTUNNEL)).diags
}
