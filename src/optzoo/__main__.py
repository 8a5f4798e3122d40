from optzoo.cli import app

app()
