// Layers of src/ (docs/architecture.md, "Layers"): a module imports only modules of its own folder and of
// folders in layers below its own; nothing imports upward or sideways, and there is no import cycle
// (type-only imports count: tsPreCompilationDeps). `npm run lint` runs this (`npm run lint:layers`);
// Top first. A folder in no layer is an error, so a new folder is placed deliberately.
const LAYERS = [
  ['main.ts'],
  ['commands', 'hooks'],
  ['actions'],
  ['cli'],
  ['census', 'preflight'],
  ['executor', 'ui'],
  ['plan', 'sources'],
  ['steps', 'kube'],
  ['planner'],
  ['errors.ts', 'invocation.ts'],
  ['exit-codes.ts'],
]

const esc = (s) => s.replace(/[.]/g, '\\.')
/** A path regex for one entry of LAYERS: a folder, or a file directly in src/. */
const entryPath = (e) => (e.endsWith('.ts') ? `^src/${esc(e)}$` : `^src/${esc(e)}/`)

const layerRules = LAYERS.flatMap((layer, rank) =>
  layer.flatMap((entry) => {
    // Its own layer and every layer above it, but not itself.
    const notBelow = LAYERS.slice(0, rank + 1)
      .flat()
      .filter((other) => other !== entry)
    if (notBelow.length === 0) return []
    return [
      {
        name: `layer:${entry}`,
        comment: `src/${entry} may import only its own folder and the layers below it (${
          LAYERS.slice(rank + 1)
            .map((l) => l.join(', '))
            .join(' > ') || 'none'
        })`,
        severity: 'error',
        from: {path: entryPath(entry)},
        to: {path: notBelow.map(entryPath).join('|')},
      },
    ]
  }),
)

const known = LAYERS.flat().map(entryPath).join('|')

module.exports = {
  forbidden: [
    {
      name: 'not-in-a-layer',
      comment: 'Every folder (and file directly) in src/ has a place in LAYERS: add a new one deliberately.',
      severity: 'error',
      from: {path: '^src/', pathNot: known},
      to: {},
    },
    {
      name: 'into-no-layer',
      comment: 'Every folder (and file directly) in src/ has a place in LAYERS: add a new one deliberately.',
      severity: 'error',
      from: {path: '^src/'},
      to: {path: '^src/', pathNot: known},
    },
    {
      name: 'no-circular',
      comment: 'Import cycles make the layers meaningless; type-only imports count.',
      severity: 'error',
      from: {path: '^src/'},
      to: {circular: true},
    },
    ...layerRules,
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: {fileName: 'tsconfig.json'},
    doNotFollow: {path: 'node_modules'},
    exclude: {path: 'node_modules'},
    includeOnly: '^src/',
  },
}
