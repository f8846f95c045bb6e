import {startRealApiServer} from './bench-apiserver.js'
const s = await startRealApiServer('/tmp/mesh-migrate-envtest-v1.32.13')
console.log(s.kubeconfigPath)
process.on('SIGTERM', async () => { await s.stop(); process.exit(0) })
setInterval(() => {}, 1 << 30)
