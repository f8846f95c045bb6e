#!/usr/bin/env -S node --import tsx
// Development entry point: runs src/ through tsx, no build needed.
import {execute} from '@oclif/core/execute'

await execute({development: true, dir: import.meta.url})
