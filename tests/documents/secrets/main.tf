provider "aws" {
  region     = "eu-west-1"
  access_key = "AKIAXAZ0HW0GVJZ6JZEQ"
  secret_key = "XoNFg7sM3ZlU3gbvwTJ4SuOkfTtog2BacYV/58rS"
}

resource "aws_db_instance" "billing" {
  engine   = "postgres"
  username = "billing"
  password = "IOdHlJH18m5xyf9f9cjx"
}

variable "db_password" {
  type      = string
  sensitive = true
}
