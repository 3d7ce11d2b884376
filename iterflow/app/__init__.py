"""The application: the CLI, the runner of one ``iterflow run``, the progress line, the report,
MLflow tracking and Spark error messages for users."""
