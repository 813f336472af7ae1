// Package s3 is a storage.Bucket on Amazon S3 or an S3-compatible store such
// as MinIO, through aws-sdk-go-v2. It is the bucket behind `s3://` URLs.
//
// The SDK is configured only when New is called, so a process that never
// uses an s3:// bucket never looks up cloud credentials. When credentials
// are given (in Config or in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) they
// are used as they are and the EC2 metadata service is never probed.
package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"floe/storage"
)

var (
	_ storage.Bucket         = (*Bucket)(nil)
	_ storage.StreamPutter   = (*Bucket)(nil)
	_ storage.ChecksumPutter = (*Bucket)(nil)
	_ storage.RangeReader    = (*Bucket)(nil)
)

// Config says which bucket to use and how to reach it.
type Config struct {
	// Bucket is the S3 bucket name.
	Bucket string
	// Prefix is prepended to every key, as a directory: "floe" and "floe/"
	// both store key k at "floe/k".
	Prefix string
	// Endpoint is the S3 API URL, e.g. "http://127.0.0.1:9000" for MinIO;
	// empty means AWS.
	Endpoint string
	// Region is the signing region; empty means the SDK's default lookup
	// (AWS_REGION, shared config), or "us-east-1" when Endpoint is set.
	Region string
	// AccessKey and SecretKey are static credentials. When empty, the
	// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY environment variables are
	// used if set, and only then the SDK's default credential chain.
	AccessKey string
	SecretKey string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY rather than
	// BUCKET.ENDPOINT/KEY; MinIO and most S3-compatible stores need it.
	PathStyle bool
}

// ParseURL parses "s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION]". An
// endpoint implies path-style addressing. Credentials never come from the
// URL: URLs end up in logs and process listings.
func ParseURL(u string) (Config, error) {
	p, err := url.Parse(u)
	if err != nil {
		return Config{}, fmt.Errorf("s3 url: %w", err)
	}
	if p.Scheme != "s3" {
		return Config{}, fmt.Errorf("s3 url %q: scheme is not s3", u)
	}
	if p.User != nil {
		return Config{}, fmt.Errorf("s3 url %q: credentials do not belong in the url; use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", p.Redacted())
	}
	if p.Host == "" {
		return Config{}, fmt.Errorf("s3 url %q: no bucket", u)
	}
	cfg := Config{Bucket: p.Host, Prefix: strings.TrimPrefix(p.Path, "/")}
	for name, vals := range p.Query() {
		if len(vals) != 1 {
			return Config{}, fmt.Errorf("s3 url %q: %s given %d times", u, name, len(vals))
		}
		switch name {
		case "endpoint":
			e, err := url.Parse(vals[0])
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return Config{}, fmt.Errorf("s3 url %q: endpoint %q is not an http(s) url", u, vals[0])
			}
			cfg.Endpoint = vals[0]
			cfg.PathStyle = true
		case "region":
			cfg.Region = vals[0]
		default:
			return Config{}, fmt.Errorf("s3 url %q: unknown parameter %q (want endpoint, region)", u, name)
		}
	}
	return cfg, nil
}

// Bucket is a storage.Bucket on one S3 bucket (and prefix). It is safe for
// concurrent use: its only state is the SDK client, which is.
type Bucket struct {
	client *awss3.Client
	bucket string
	prefix string
}

// New configures an S3 client for cfg. It does not contact the store, so an
// agent can start before its object store is reachable.
func New(ctx context.Context, cfg Config) (*Bucket, error) {
	return newBucket(ctx, cfg, nil)
}

// newBucket is New with the SDK's HTTP client replaced when hc is not nil
// (tests tamper with requests on the wire).
func newBucket(ctx context.Context, cfg Config, hc aws.HTTPClient) (*Bucket, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	var opts []func(*config.LoadOptions) error
	region := cfg.Region
	if region == "" && cfg.Endpoint != "" {
		region = "us-east-1"
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	access, secret, session := cfg.AccessKey, cfg.SecretKey, ""
	if access == "" && secret == "" {
		access, secret = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		session = os.Getenv("AWS_SESSION_TOKEN")
	}
	if access != "" || secret != "" {
		if access == "" || secret == "" {
			return nil, errors.New("s3: access key and secret key must be given together")
		}
		opts = append(opts,
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(access, secret, session)),
			// With static credentials nothing needs the EC2 metadata
			// service; probing it off EC2 costs seconds of timeouts.
			config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
		)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load aws config: %w", err)
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// The SDK validates response checksums "when supported" and, for
		// every ranged GET (which carries none), logs that it could not:
		// thousands of lines an hour. floe's objects carry their own
		// checks (batch CRCs, the footer's checksum).
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if hc != nil {
			o.HTTPClient = hc
		}
		o.APIOptions = append(o.APIOptions, addUnsignedPayload)
	})
	prefix := cfg.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Bucket{client: client, bucket: cfg.Bucket, prefix: prefix}, nil
}

// addUnsignedPayload signs every request with UNSIGNED-PAYLOAD instead of
// the SHA-256 of its body. Over https the SDK already does so (the body's
// CRC32 travels in a trailer); over http it would hash every PUT body with
// SHA-256, a tenth of an agent's CPU at full produce rate. The body's
// integrity does not rest on that hash: the SDK still sends the body's
// CRC32 in the signed x-amz-checksum-crc32 header, which S3 and MinIO
// verify before storing anything, and every floe object carries its own
// CRC32C. What http loses is protection of the body against a deliberate
// man in the middle, which plain http does not offer anyway.
func addUnsignedPayload(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("FloeUnsignedPayload",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if v4.GetPayloadHash(ctx) == "" {
				ctx = v4.SetPayloadHash(ctx, unsignedPayload)
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.Before)
}

// unsignedPayload is SigV4's marker for a body left out of the signature.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// httpStatus returns the HTTP status of a failed S3 call, or 0.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports a missing object. A missing bucket is not a missing
// object: it is a configuration error and must surface as one.
func isNotFound(err error) bool {
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	case "NoSuchBucket":
		return false
	}
	return httpStatus(err) == http.StatusNotFound
}

// Put uploads the concatenated parts under key. The SDK computes their
// CRC32 and sends it for S3 to check (see addUnsignedPayload).
func (b *Bucket) Put(ctx context.Context, key string, parts ...[]byte) error {
	return b.put(ctx, key, nil, parts)
}

// PutChecksummed uploads the concatenated parts under key with their
// CRC-32C, which S3 checks before storing anything: the SDK computes no
// checksum of its own (a pass over every byte).
func (b *Bucket) PutChecksummed(ctx context.Context, key string, crc32c uint32, parts ...[]byte) error {
	sum := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32c))
	return b.put(ctx, key, &sum, parts)
}

func (b *Bucket) put(ctx context.Context, key string, crc32c *string, parts [][]byte) error {
	body := newPartsReader(parts)
	_, err := b.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:         &b.bucket,
		Key:            aws.String(b.prefix + key),
		Body:           body,
		ContentLength:  aws.Int64(body.size),
		ChecksumCRC32C: crc32c,
	})
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", key, err)
	}
	return nil
}

// streamPartSize is the part size of PutStream's multipart uploads, and
// the memory one PutStream holds: S3's parts are at least 5 MiB (but the
// last), and at most 10,000 of them make an object of up to 78 GiB.
const streamPartSize = 8 << 20

// PutStream uploads size bytes of body under key. An object of up to one
// part is one PutObject; a larger one is a multipart upload of
// streamPartSize parts read one at a time, so the whole object is never
// in memory. A failed upload is aborted, leaving no object.
func (b *Bucket) PutStream(ctx context.Context, key string, size int64, body io.Reader) error {
	if size <= streamPartSize {
		data, err := storage.ReadStream(body, size)
		if err != nil {
			return fmt.Errorf("s3 put %s: %w", key, err)
		}
		return b.Put(ctx, key, data)
	}
	k := aws.String(b.prefix + key)
	up, err := b.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
		Bucket: &b.bucket, Key: k, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return fmt.Errorf("s3 put %s: create multipart upload: %w", key, err)
	}
	if err := b.uploadParts(ctx, k, up.UploadId, size, body); err != nil {
		// Without the abort the parts would be kept (and billed) until a
		// lifecycle rule removed them.
		_, aerr := b.client.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{
			Bucket: &b.bucket, Key: k, UploadId: up.UploadId,
		})
		return fmt.Errorf("s3 put %s: %w", key, errors.Join(err, aerr))
	}
	return nil
}

// uploadParts sends body as the parts of upload id, then completes it.
func (b *Bucket) uploadParts(ctx context.Context, k, id *string, size int64, body io.Reader) error {
	buf := make([]byte, streamPartSize)
	var done []types.CompletedPart
	for n := int32(1); size > 0; n++ {
		part := buf[:min(size, streamPartSize)]
		if _, err := io.ReadFull(body, part); err != nil {
			return fmt.Errorf("read body: %w", err)
		}
		size -= int64(len(part))
		out, err := b.client.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket: &b.bucket, Key: k, UploadId: id, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return fmt.Errorf("upload part %d: %w", n, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
	}
	if err := storage.CheckStreamEnd(body); err != nil {
		return err
	}
	_, err := b.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: k, UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	})
	if err != nil {
		return fmt.Errorf("complete multipart upload: %w", err)
	}
	return nil
}

// PutIfAbsent uploads data under key with If-None-Match: *, so the store
// itself decides atomically; an existing key gives storage.ErrExists.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	// S3 answers 409 ConditionalRequestConflict when another conditional
	// write to the key is in progress; the outcome is then unknown and the
	// request must be retried, which will see 412 if the other one won.
	const attempts = 5
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := b.client.PutObject(ctx, &awss3.PutObjectInput{
			Bucket:        &b.bucket,
			Key:           aws.String(b.prefix + key),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			IfNoneMatch:   aws.String("*"),
		})
		switch {
		case err == nil:
			return nil
		case httpStatus(err) == http.StatusPreconditionFailed || errorCode(err) == "PreconditionFailed":
			return fmt.Errorf("s3 put %s: %w", key, storage.ErrExists)
		case httpStatus(err) == http.StatusConflict && attempt < attempts:
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("s3 put %s: %w", key, ctx.Err())
			case <-t.C:
			}
			backoff *= 2
		default:
			return fmt.Errorf("s3 put %s: %w", key, err)
		}
	}
}

// GetRange reads length bytes of key from offset (to the end if length is
// negative) with one ranged GET.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 {
		return nil, fmt.Errorf("s3 get %s: negative offset %d", key, offset)
	}
	if length == 0 {
		// HTTP cannot ask for zero bytes; check that the key exists.
		if _, err := b.Size(ctx, key); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	out, ok, err := b.getObject(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []byte{}, nil
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if n := aws.ToInt64(out.ContentLength); n > 0 {
		// Trust the announced length only so far: a lying server must
		// not make us allocate gigabytes up front. ReadFrom wants
		// MinRead bytes free for its last read (the one that sees EOF):
		// without them it reallocates at twice the size and copies all.
		buf.Grow(int(min(n, 64<<20)) + bytes.MinRead)
	}
	if _, err := io.Copy(&buf, out.Body); err != nil {
		return nil, fmt.Errorf("s3 get %s: read body: %w", key, err)
	}
	if buf.Len() == 0 {
		return []byte{}, nil
	}
	return buf.Bytes(), nil
}

// ReadRange fills buf with the bytes of key from offset, with one ranged
// GET read straight into it.
func (b *Bucket) ReadRange(ctx context.Context, key string, offset int64, buf []byte) error {
	if offset < 0 {
		return fmt.Errorf("s3 read %s: negative offset %d", key, offset)
	}
	if len(buf) == 0 {
		_, err := b.Size(ctx, key)
		return err
	}
	out, ok, err := b.getObject(ctx, key, offset, int64(len(buf)))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("s3 read %s [%d,%d): past the end: %w", key, offset, offset+int64(len(buf)), io.ErrUnexpectedEOF)
	}
	defer out.Body.Close()
	if n, err := io.ReadFull(out.Body, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("s3 read %s [%d,%d): %d bytes: %w", key, offset, offset+int64(len(buf)), n, err)
	}
	return nil
}

// getObject starts a GET of length bytes (not 0) of key from offset, or to
// its end if length is negative. ok is false, with no body, when the range
// starts at or past the end of an existing object.
func (b *Bucket) getObject(ctx context.Context, key string, offset, length int64) (out *awss3.GetObjectOutput, ok bool, err error) {
	in := &awss3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)}
	switch {
	case length > 0 && length <= 1<<63-1-offset:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		// A negative length, or one that reaches past any possible end.
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err = b.client.GetObject(ctx, in)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			// The range starts at or past the end of an existing object
			// (a missing key is 404): there are no bytes to return.
			return nil, false, nil
		}
		if isNotFound(err) {
			return nil, false, fmt.Errorf("s3 get %s: %w (%v)", key, storage.ErrNotFound, err)
		}
		return nil, false, fmt.Errorf("s3 get %s: %w", key, err)
	}
	return out, true, nil
}

// Size returns the size of key from a HEAD request.
func (b *Bucket) Size(ctx context.Context, key string) (int64, error) {
	out, err := b.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)})
	if err != nil {
		if isNotFound(err) {
			return 0, fmt.Errorf("s3 size %s: %w (%v)", key, storage.ErrNotFound, err)
		}
		return 0, fmt.Errorf("s3 size %s: %w", key, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Delete removes key; a missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("s3 delete %s: %w", key, err)
	}
	return nil
}

// List calls fn for each object whose key starts with prefix, in lexical
// key order (S3 lists keys in UTF-8 binary order), one page at a time.
func (b *Bucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	p := awss3.NewListObjectsV2Paginator(b.client, &awss3.ListObjectsV2Input{
		Bucket: &b.bucket,
		Prefix: aws.String(b.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), b.prefix)
			if !ok {
				continue
			}
			info := storage.ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}
