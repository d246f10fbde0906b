include:
  - common
  - app.sub
shared: from-main
main:
  own: 1
  nested: {a: main}
