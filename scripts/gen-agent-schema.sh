#!/usr/bin/env bash
# Regenerates docs/schemas/agent-definition.schema.json from AGENT_FILE_SCHEMA in
# src/engine/agent.ts (the schema the engine itself validates agent files with), adding only the
# draft 2020-12 "$schema" keyword. Run it after changing the agent file format.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npx tsx -e '
import("./src/engine/agent.ts").then(({ AGENT_FILE_SCHEMA }) => {
  const doc = { $schema: "https://json-schema.org/draft/2020-12/schema", ...AGENT_FILE_SCHEMA };
  process.stdout.write(JSON.stringify(doc, null, 2) + "\n");
});
' > docs/schemas/agent-definition.schema.json.tmp
mv docs/schemas/agent-definition.schema.json.tmp docs/schemas/agent-definition.schema.json
