package kafkaproto

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is the header that precedes every request body.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id (and for
	// ControlledShutdown v0, whose header has none).
	ClientID *string
}

// apiVersionsKey is the ApiVersions API key. Its response header is always
// v0, so that a client can parse the answer before it knows our versions.
const apiVersionsKey = 18

// requestHeaderVersion returns the header version (0, 1 or 2) of a request
// with this key and version.
func requestHeaderVersion(key, version int16) int {
	if key == 7 && version == 0 {
		// ControlledShutdown v0 predates client ids.
		return 0
	}
	from, ok := flexibleFrom()[key]
	if ok && from >= 0 && version >= from {
		return 2
	}
	return 1
}

// flexibleFrom maps every API key kmsg knows to the first version at which
// its requests are flexible (-1 if never). Flexibility only ever switches on
// at some version, so versions above what kmsg knows stay flexible: an
// ApiVersions v5+ header remains decodable, which KIP-511 needs so that the
// broker can answer with v0. The map is built once, sparing every request
// header a throwaway kmsg request.
var flexibleFrom = sync.OnceValue(func() map[int16]int16 {
	m := make(map[int16]int16)
	for key := range int16(math.MaxInt16) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		m[key] = -1
		for v := range req.MaxVersion() + 2 {
			req.SetVersion(v)
			if req.IsFlexible() {
				m[key] = v
				break
			}
		}
	}
	return m
})

// ParseRequestHeader parses the header (v0, v1 or v2) of a request frame and
// returns it with the body bytes that follow it (aliasing frame).
//
// The header version follows from key and version: v2 when the request at
// that version is flexible, v1 otherwise, v0 for ControlledShutdown v0, and v1
// for an API key kmsg does not know. Header v2 keeps client_id as a
// non-compact nullable string (int16 length, -1 for null) and then carries
// tagged fields, which are skipped. Malformed input returns an error wrapping
// ErrMalformed.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: header needs 8 bytes, have %d", ErrMalformed, len(frame))
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	b := frame[8:]
	hv := requestHeaderVersion(h.APIKey, h.APIVersion)
	if hv == 0 {
		return h, b, nil
	}

	if len(b) < 2 {
		return h, nil, fmt.Errorf("%w: truncated client id length", ErrMalformed)
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case n == -1:
	case n < 0:
		return h, nil, fmt.Errorf("%w: client id length %d", ErrMalformed, n)
	case int(n) > len(b):
		return h, nil, fmt.Errorf("%w: client id of %d bytes, %d left", ErrMalformed, n, len(b))
	default:
		id := string(b[:n])
		h.ClientID = &id
		b = b[n:]
	}
	if hv == 1 {
		return h, b, nil
	}

	b, err := skipTags(b)
	if err != nil {
		return h, nil, err
	}
	return h, b, nil
}

// skipTags skips a tagged-field section (uvarint count, then per field a
// uvarint tag, a uvarint size and that many bytes) and returns what follows.
// Every field consumes at least two bytes, so a lying count runs out of input
// quickly instead of looping.
func skipTags(b []byte) ([]byte, error) {
	num, n := binary.Uvarint(b)
	if n <= 0 || num > uint64(len(b)) {
		return nil, fmt.Errorf("%w: bad tagged field count", ErrMalformed)
	}
	b = b[n:]
	for range num {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: bad tag", ErrMalformed)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: bad tagged field size", ErrMalformed)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// DecodeRequest decodes body into a fresh kmsg.Request for hdr's key at hdr's
// version. An unknown key, a negative version or a version above the highest
// one kmsg knows (whose layout kmsg would silently get wrong) returns an error
// wrapping ErrMalformed; callers check Table.Supported first and answer
// UNSUPPORTED_VERSION instead. Trailing bytes after the body are ignored, as
// Kafka does. DecodeRequest never panics: a panic inside kmsg is recovered and
// reported as ErrMalformed. Strings in the request are copied, so body may be
// reused.
func DecodeRequest(hdr RequestHeader, body []byte) (req kmsg.Request, err error) {
	r := kmsg.RequestForKey(hdr.APIKey)
	if r == nil {
		return nil, fmt.Errorf("%w: unknown api key %d", ErrMalformed, hdr.APIKey)
	}
	if hdr.APIVersion < 0 || hdr.APIVersion > r.MaxVersion() {
		return nil, fmt.Errorf("%w: api key %d version %d outside the known 0..%d",
			ErrMalformed, hdr.APIKey, hdr.APIVersion, r.MaxVersion())
	}
	r.SetVersion(hdr.APIVersion)
	defer func() {
		if p := recover(); p != nil {
			req, err = nil, fmt.Errorf("%w: api key %d version %d: decoder panic: %v",
				ErrMalformed, hdr.APIKey, hdr.APIVersion, p)
		}
	}()
	if err := r.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: api key %d version %d: %v", ErrMalformed, hdr.APIKey, hdr.APIVersion, err)
	}
	return r, nil
}

// AppendResponse appends a complete size-prefixed response frame to dst: the
// length, hdr's correlation id, then, when the response at hdr.APIVersion is
// flexible (response header v1), an empty tagged-field byte, then resp's body
// at resp.GetVersion().
//
// ApiVersions (key 18) is the exception: its response header is always v0,
// without the tag byte, even for v3+; clients such as librdkafka fail to
// parse the answer otherwise.
func AppendResponse(dst []byte, hdr RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // length, patched below
	dst = binary.BigEndian.AppendUint32(dst, uint32(hdr.CorrelationID))
	if hdr.APIKey != apiVersionsKey && responseFlexible(hdr, resp) {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// responseFlexible reports whether the response to a request at hdr's version
// is flexible. The header follows the request's version even when the body
// is written at another one.
func responseFlexible(hdr RequestHeader, resp kmsg.Response) bool {
	if resp.GetVersion() == hdr.APIVersion {
		return resp.IsFlexible()
	}
	r := kmsg.ResponseForKey(hdr.APIKey)
	if r == nil {
		return resp.IsFlexible()
	}
	r.SetVersion(hdr.APIVersion)
	return r.IsFlexible()
}
