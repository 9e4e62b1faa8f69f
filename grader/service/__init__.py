"""The grading service: durable jobs and workers, evaluations, review and sign-off."""
