package problem

//go:generate go run ./errorsdoc ../../docs/ERRORS.md
