// fastdds backend: in progress
