package inspector

import "io/fs"

// Assets is the page's embedded files, for the tests.
func Assets() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	return sub
}
