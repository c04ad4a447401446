//go:build unix

package datadir

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// syncDir fsyncs a directory, making its entries durable. A directory removed meanwhile needs
// nothing.
func syncDir(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileID is the file's inode number: a file replaced by a rename has another.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
