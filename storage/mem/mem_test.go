package mem_test

import (
	"testing"

	"floe/storage"
	"floe/storage/mem"
	"floe/storage/storagetest"
)

func TestBucket(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket { return mem.New() })
}
