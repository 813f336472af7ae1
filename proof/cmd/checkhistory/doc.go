// Command checkhistory checks a recorded Kafka history again: it reads a
// proof/history JSON Lines file (or stdin), runs proof/checker, prints the
// Markdown report, optionally writes the JSON result, and exits 1 when the
// history is not valid (2 when it cannot be read).
//
//	go run ./proof/cmd/checkhistory [-ww-deps] [-json result.json] history.jsonl
package main
