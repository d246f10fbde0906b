tabs:
	x: 1
