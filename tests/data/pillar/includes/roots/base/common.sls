shared: from-common
common_key: 1
main:
  nested: {a: common, b: common}
