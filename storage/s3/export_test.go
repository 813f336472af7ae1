package s3

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// NewWithHTTPClient is New with the SDK's HTTP client replaced, for tests
// that watch or tamper with requests on the wire.
func NewWithHTTPClient(ctx context.Context, cfg Config, hc aws.HTTPClient) (*Bucket, error) {
	return newBucket(ctx, cfg, hc)
}
