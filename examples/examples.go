// Package examples holds the configurations to start from. The demo network's, demo.yaml, is
// embedded in the binary so that `vigil dev` and `vigil validate` need no file.
package examples

import "embed"

// DemoName is how the embedded demo configuration is named in messages.
const DemoName = "embedded examples/demo.yaml"

//go:embed demo.yaml
var files embed.FS

// Demo returns the demo configuration, examples/demo.yaml as built into the binary.
func Demo() []byte {
	b, err := files.ReadFile("demo.yaml")
	if err != nil {
		panic("examples: demo.yaml is not embedded: " + err.Error())
	}
	return b
}
