package config

// normalize applies the defaults that depend on other fields. (Being written: see the config
// validation work.)
func (d *Document) normalize() {}

// Validate returns every problem of d at once as Errors, or nil.
func (d *Document) Validate() error {
	var es Errors
	if len(d.Regions) == 0 {
		es.add("regions", "at least one region is required")
	}
	return es.err()
}
