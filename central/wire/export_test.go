package wire

// The writers and readers of headers, for TestHeaders.
var (
	AppendArrayLen = appendArrayLen
	AppendMapLen   = appendMapLen
	AppendStr      = appendStr
	AppendBin      = appendBin
	ReadArrayLen   = readWith((*reader).arrayLen)
	ReadMapLen     = readWith((*reader).mapLen)
)

// readWith makes read a function of bytes: the length read and the bytes
// it took.
func readWith(read func(*reader) (uint64, error)) func([]byte) (uint64, int, error) {
	return func(b []byte) (uint64, int, error) {
		r := reader{b: b}
		n, err := read(&r)
		return n, r.i, err
	}
}
