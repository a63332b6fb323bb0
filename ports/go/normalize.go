package shardhash

// normalize applies a Unicode normalisation form.  Go's standard library has
// no Unicode normalisation (it lives in golang.org/x/text), so this
// dependency-free port refuses codecs that ask for one.
func normalize(form, s string) (string, error) {
	return "", &Error{"Unsupported", "Unicode normalisation (" + form + ") is not available in this port"}
}
