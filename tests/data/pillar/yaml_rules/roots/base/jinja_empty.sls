{% if false %}
jinja_empty: 1
{% endif %}
