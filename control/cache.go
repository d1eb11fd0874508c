package control

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SaveCache writes s to path atomically: a temporary file in the same directory, fsync,
// rename over path, fsync of the directory. A crash leaves either the old copy or the new.
func SaveCache(path string, s *State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("control: encode configuration copy: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control: configuration copy directory: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("control: write configuration copy: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("control: write configuration copy: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("control: sync configuration copy: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("control: close configuration copy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("control: replace configuration copy: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// LoadCache reads the copy at path. A missing file gives an error that satisfies
// errors.Is(err, os.ErrNotExist).
func LoadCache(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("control: read configuration copy: %w", err)
	}
	s := emptyState()
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("control: configuration copy %s is corrupt: %w", path, err)
	}
	return s, nil
}
