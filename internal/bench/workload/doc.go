// Package workload generates the data a benchmark sends: a population of
// node-exporter-like series, their sample values, the order in which
// concurrent senders send them (the schedule) and the remote-write 1.0 and
// 2.0 request bodies.
//
// Everything is a pure function of the Options, above all the seed: the
// labels of series id i, the value of its k-th sample and the bytes of
// request q of sender c are the same on every run, so that two servers are
// sent exactly the same data and a run can be repeated.
//
// # Ordering
//
// Servers reject a sample older than the newest one of its series, so each
// series' samples must reach the server in time order although C senders
// run at once. The schedule guarantees it by sharding: every series slot
// belongs to exactly one sender, a sender sends its requests one at a time
// and in sequence order, and a slot's timestamps grow with the sequence
// number. Churn replaces a slot's series with a series that was never sent
// before, so it cannot break the order either.
package workload
