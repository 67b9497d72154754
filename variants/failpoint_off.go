//go:build chaos && !failpoints

package variants

func hit(string) error { return nil }
