"""GRAB dataset builders."""
