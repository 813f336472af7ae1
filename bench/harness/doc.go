// Package harness is what the benchmark programs (bench/matrix,
// bench/scale) need around the load itself: a throwaway
// PostgreSQL and MinIO with a fresh database and bucket per run, waiting
// for a floe process to be ready, reading a process's CPU time and memory
// and the machine's load from /proc, and redacting temporary paths and
// store URLs from the commands they write into the docs.
//
// It is kept out of package bench, which `floe bench` links into the floe
// binary: the servers come from metadata/pgtest and storage/miniotest.
package harness
