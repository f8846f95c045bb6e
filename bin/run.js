#!/usr/bin/env node
// Production entry point: compiled commands from dist/ and the shipped oclif manifest.
import {execute} from '@oclif/core/execute'

await execute({dir: import.meta.url})
