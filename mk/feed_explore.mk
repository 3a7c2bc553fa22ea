# The feed engine explored under the shuttle model checker (src/feed/explore.rs): small
# configurations under shuttle's random and PCT schedulers, five named properties, and each
# property's mutant found. `make feed-explore` is part of `make test` (seconds);
# `make feed-explore-long` runs 10,000 executions per configuration and scheduler (minutes),
# or set FEED_EXPLORE_ITERATIONS.
FEED_EXPLORE_ITERATIONS ?= 500
.PHONY: feed-explore feed-explore-long
test: feed-explore
feed-explore:
	$(CARGO) clippy --lib --tests --features testing,shuttle -- -D warnings
	FEED_EXPLORE_ITERATIONS=$(FEED_EXPLORE_ITERATIONS) \
	    $(CARGO) test --lib --features testing,shuttle feed::explore -- --nocapture
feed-explore-long:
	$(MAKE) feed-explore FEED_EXPLORE_ITERATIONS=10000
