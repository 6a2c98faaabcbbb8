# A repository with three profiles of its own (docs/routing.md):
# zz_plain (process sandbox), zz_seer (vision, container, 8 workers),
# zz_vm (microvm, 2 workers, MCP client).
mkdir -p .git .bernstein/catalog/profiles
for spec in "zz_plain|tool_use: true|sandbox: process" \
	"zz_seer|vision: true|sandbox: container|max_parallel_workers: 8" \
	"zz_vm|sandbox: microvm|max_parallel_workers: 2|mcp_client: true"; do
	name=${spec%%|*}
	{
		printf 'name: %s\ndisplay_name: "%s"\nshape: module\n' "$name" "$name"
		printf 'invocation:\n  binary: %s\n  prompt_positional: true\ncapabilities:\n' "$name"
		printf '%s\n' "${spec#*|}" | tr '|' '\n' | sed 's/^/  /'
	} >".bernstein/catalog/profiles/$name.yaml"
done
printf 'adapters:\n  zz_seer: true\n' >.bernstein/catalog/multimodal.yaml
