"""The fault-injection tier: review-loop itself stopped, killed or cancelled mid-review."""
