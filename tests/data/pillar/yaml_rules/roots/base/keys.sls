keys:
  3: int key
  2.5: float key
  false: bool key
  ~: null key
  "quoted key": q
  ? complex
  : value
