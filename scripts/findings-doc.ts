// Writes docs/findings.md from the finding catalogue (src/planner/findings/catalogue.ts).
import {writeFileSync} from 'node:fs'
import {renderFindingsDoc} from '../src/planner/findings/doc.js'

writeFileSync(new URL('../docs/findings.md', import.meta.url), renderFindingsDoc())
