// cyclonedds backend: in progress
