dev_only: 1
dev_dict:
  nested: {p: dev}
  lst: [dev1]
