// Package rank ranks the documents of one user's memory for a query.
package rank
