//go:build !amd64 || purego

package vector

// useAVX2 is false where there is no assembly kernel.
const useAVX2 = false

// dot returns the inner product of a and b[:len(a)], which for unit vectors is their cosine.
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

func dotAVX2(a, b []float32) float32 { panic("vector: no AVX2 kernel in this build") }
