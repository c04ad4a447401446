//go:build windows

package datadir

import "io/fs"

// syncDir does nothing on Windows, which cannot open a directory to sync it; its filesystems
// (NTFS) journal directory changes.
func syncDir(string) error { return nil }

// fileID is 0 on Windows: size and modification time tell a changed file.
func fileID(fs.FileInfo) uint64 { return 0 }
