#!/usr/bin/env -S node --import tsx
// Development entry point: oclif in development mode with tsx registered. The commands come from the build
// (package.json oclif.commands: dist/cli.cjs), so run `npm run build` after a change.
import {execute} from '@oclif/core/execute'

await execute({development: true, dir: import.meta.url})
